# Schemathesis hooks for test/api-fuzz.test.js (loaded through
# SCHEMATHESIS_HOOKS=hooks with this folder on PYTHONPATH).
#
# - Generated http(s) URLs point at a closed port on 127.0.0.1, so no
#   monitor, webhook or probe the fuzzer saves can make the API reach past
#   loopback (the tests' rule: traffic only to loopback and the lab).
# - Ids and the WebPageTest key are, half of the time, ones that exist
#   (H3LENS_FUZZ_IDS, H3LENS_FUZZ_WPT), so the fuzzer gets past the 404s and
#   403s to the code behind them. Deletions keep random ids: the seeded
#   things stay for the rest of the run.
# - NDJSON bodies (the results import) are sent as lines of JSON; net log
#   bodies (application/gzip) as the bytes generated.
import json
import os
import re

import schemathesis
from hypothesis import strategies as st

IDS = json.loads(os.environ.get('H3LENS_FUZZ_IDS', '{}'))
WPT = json.loads(os.environ.get('H3LENS_FUZZ_WPT', '{}'))
LOOPBACK = 'http://127.0.0.1:9/'


def loopback_urls(value):
    if isinstance(value, dict):
        return {k: loopback_urls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [loopback_urls(v) for v in value]
    if isinstance(value, str) and looks_like_http(value):
        return LOOPBACK
    return value


def looks_like_http(text):
    # As a WHATWG URL parser reads it (the API's `new URL()`): tabs and
    # newlines anywhere are dropped, C0 controls and spaces at the ends are
    # trimmed, and "http:host" or "http:\\host" still name a host.
    text = re.sub(r'[\t\n\r]', '', text).strip(''.join(map(chr, range(0x21))))
    return re.match(r'https?:', text, re.IGNORECASE) is not None


@schemathesis.hook
def map_body(ctx, body):
    return loopback_urls(body)


@schemathesis.hook
def flatmap_path_parameters(ctx, path_parameters):
    operation = ctx.operation
    if not path_parameters or 'id' not in path_parameters or operation.method.upper() == 'DELETE':
        return st.just(path_parameters)
    known = next((v for prefix, v in IDS.items() if operation.path.startswith(prefix)), None)
    if known is None:
        return st.just(path_parameters)
    return st.sampled_from([path_parameters, {**path_parameters, 'id': known}])


@schemathesis.hook
def flatmap_query(ctx, query):
    if not WPT or not ctx.operation.path.startswith('/work/') or not isinstance(query, dict):
        return st.just(query)
    return st.sampled_from([query, {**query, 'location': WPT['location'], 'key': WPT['key']}])


@schemathesis.serializer('application/gzip')
def gzip_bytes(ctx, value):
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogatepass')
    return json.dumps(value).encode('utf-8')


@schemathesis.serializer('application/x-ndjson')
def ndjson(ctx, value):
    if isinstance(value, str):
        return value.encode('utf-8', 'surrogatepass')
    rows = value if isinstance(value, list) else [value]
    return ''.join(json.dumps(row) + '\n' for row in rows).encode('utf-8')
