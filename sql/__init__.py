"""The re-applied layer of the schema (functions, views, grants), shipped as package data: jobctl.migrate."""
