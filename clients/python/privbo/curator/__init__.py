# The generated stubs of proto/privbo/curator/v1 (scripts/generate.sh).
