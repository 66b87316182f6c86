"""Names in a request's URL: the names of its query parameters, and tenant, queue and schedule names
in its path.

Unknown query parameters are refused (422), as unknown fields of a body are (models: extra="forbid").
FastAPI ignores a query parameter an endpoint does not declare, so `GET /api/v1/jobs?state=dead`
once listed every job (the parameter was `status`). Each API router carries `known_query` as a
dependency: a name the route does not declare answers 422 with the API's validation body
(`field` the name, `reason` "unknown field"). It runs before the token is checked: the names are
the OpenAPI document's, public.

The `name` path convertor: a tenant, queue or schedule name in a path may hold "/" and any other
character the database allows (control characters included: the API answers for them as the
database does), so `{tenant:name}` matches one or more of anything. Starlette's own `path` matches no
newline. Registered when the route modules import `known_query`, before their routes are made; the
app tries the routes with an action after the name first (jobctl.api.app).
"""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.convertors import Convertor, register_url_convertor

# a route's declared query names, computed once per route
_names: dict[int, frozenset[str]] = {}


def declared(route: APIRoute) -> frozenset[str]:
    """The query parameter names (aliases where given) the route's endpoint and dependencies declare."""
    names = _names.get(id(route))
    if names is None:
        found: set[str] = set()
        todo: list[Dependant] = [route.dependant]
        while todo:
            d = todo.pop()
            found.update(p.alias for p in d.query_params)
            todo.extend(d.dependencies)
        names = _names[id(route)] = frozenset(found)
    return names


async def _known_query(request: Request) -> None:
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    unknown = [k for k in dict.fromkeys(request.query_params.keys()) if k not in declared(route)]
    if unknown:
        extra = "Extra inputs are not permitted"
        raise RequestValidationError(
            [{"type": "extra_forbidden", "loc": ("query", k), "msg": extra, "input": None} for k in unknown]
        )


known_query = Depends(_known_query)


class NameConvertor(Convertor[str]):
    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("name", NameConvertor())
