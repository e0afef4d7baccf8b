"""A loopback OTLP/HTTP trace receiver for hermes' trace export test.

Decodes each POST /v1/traces body with the official protocol definitions
(opentelemetry-proto) and appends one JSON line per span to the file named by argv[2]:
name, trace and span ids (hex), parent span id, kind, and attributes as strings. Prints the
port it listens on (argv[1], 0 for any) on its first line. With argv[3] == "refuse" it
answers every export with 503 instead (a collector that is up but failing).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value_text(v):
    kind = v.WhichOneof("value")
    if kind == "bool_value":
        return "true" if v.bool_value else "false"
    return str(getattr(v, kind)) if kind else ""


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if len(sys.argv) > 3 and sys.argv[3] == "refuse":
            self.send_response(503)
            self.end_headers()
            return
        request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
        with open(sys.argv[2], "a", encoding="utf-8") as out:
            for resource_spans in request.resource_spans:
                resource = {a.key: value_text(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        out.write(json.dumps({
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "kind": span.kind,
                            "attributes": {a.key: value_text(a.value) for a in span.attributes},
                            "service": resource.get("service.name", ""),
                            "resource": resource,
                        }) + "\n")
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
