from http.server import HTTPServer, SimpleHTTPRequestHandler


def serve():
    server = HTTPServer(("0.0.0.0", 8000), SimpleHTTPRequestHandler)
    server.serve_forever()
