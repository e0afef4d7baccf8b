"""A loopback OTLP trace receiver for hermes' trace export test.

Decodes each export with the official protocol definitions (opentelemetry-proto) and
appends one JSON line per span to the file named by argv[2]: name, trace and span ids (hex),
parent span id, kind, and attributes as strings. Prints the port it listens on (argv[1], 0
for any) on its first line. argv[3] is the mode: "accept" (OTLP/HTTP, POST /v1/traces),
"refuse" (OTLP/HTTP answering every export with 503: a collector that is up but failing) or
"grpc" (OTLP/gRPC, the TraceService/Export call, through grpcio).
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

MODE = sys.argv[3] if len(sys.argv) > 3 else "accept"


def value_text(v):
    kind = v.WhichOneof("value")
    if kind == "bool_value":
        return "true" if v.bool_value else "false"
    return str(getattr(v, kind)) if kind else ""


def record(request):
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


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if MODE == "refuse":
            self.send_response(503)
            self.end_headers()
            return
        record(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


def serve_grpc():
    from concurrent import futures

    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class TraceService(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            record(request)
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
    port = server.add_insecure_port("127.0.0.1:%d" % int(sys.argv[1]))
    server.start()
    print(port, flush=True)
    server.wait_for_termination()


if MODE == "grpc":
    serve_grpc()
else:
    server = HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
