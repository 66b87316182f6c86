"""The `name` path convertor: a tenant, queue or schedule name in a path may hold "/" and any other
character the database allows (control characters included: the API answers for them as the
database does), so `{tenant:name}` matches one or more of anything. Starlette's own `path` matches no
newline. Imported by the route modules that use it, before their routes are made; the app tries the
routes with an action after the name first (jobctl.api.app)."""

from __future__ import annotations

from starlette.convertors import Convertor, register_url_convertor


class NameConvertor(Convertor[str]):
    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("name", NameConvertor())
