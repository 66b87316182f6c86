"""Unknown query parameters are refused (422), as unknown fields of a body are (models: extra="forbid").

FastAPI ignores a query parameter an endpoint does not declare, so `GET /api/v1/jobs?state=dead`
once listed every job (the parameter was `status`). Each API router carries `known_query` as a
dependency: a name the route does not declare answers 422 with the API's validation body
(`field` the name, `reason` "unknown field"). It runs before the token is checked: the names are
the OpenAPI document's, public.
"""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute

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
