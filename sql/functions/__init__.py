"""One file per function or view, CREATE OR REPLACE, in the order of ../functions.list."""
