"""One file per function or view, CREATE OR REPLACE, one folder a concept, in the order of ../functions.list."""
