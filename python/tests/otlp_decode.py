"""Decodes an OTLP/JSON file (rlprof export -f otlp) with OpenTelemetry's own protobuf definitions
(opentelemetry-proto, in .venv-integ): the hex trace and span ids of OTLP/JSON become the bytes
protobuf's JSON mapping expects, json_format.Parse checks every field name and type against
ExportTraceServiceRequest, and the spans are printed back as JSON for the test to read.

    .venv-integ/bin/python python/tests/otlp_decode.py spans.otlp.json
"""
import base64, json, sys
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
doc = json.load(open(sys.argv[1]))
for rs in doc["resourceSpans"]:
    for ss in rs["scopeSpans"]:
        for sp in ss["spans"]:
            for k in ("traceId", "spanId", "parentSpanId"):
                if k in sp:
                    sp[k] = base64.b64encode(bytes.fromhex(sp[k])).decode()
req = json_format.Parse(json.dumps(doc), ExportTraceServiceRequest())
out = []
for rs in req.resource_spans:
    res = {a.key: json_format.MessageToDict(a.value) for a in rs.resource.attributes}
    for ss in rs.scope_spans:
        for sp in ss.spans:
            out.append({"resource": res, "trace": sp.trace_id.hex(), "span": sp.span_id.hex(), "parent": sp.parent_span_id.hex(),
                        "name": sp.name, "start": sp.start_time_unix_nano, "end": sp.end_time_unix_nano,
                        "attrs": {a.key: json_format.MessageToDict(a.value) for a in sp.attributes}})
print(json.dumps(out))
