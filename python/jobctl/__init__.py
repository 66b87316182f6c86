"""jobctl: a multi-tenant job scheduler that lives inside PostgreSQL."""

__version__ = "0.1.0"
