"""schemathesis hooks for topicd's contract run: NDJSON corpus uploads.

The spec gives `application/x-ndjson` bodies as a string (one JSON document per line);
schemathesis has no serializer for that media type, so it sends the string as is (and
any other generated value as one JSON line).
"""
import json

import schemathesis


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return (json.dumps(value) + "\n").encode()
