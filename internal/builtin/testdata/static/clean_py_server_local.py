import tempfile

from flask import Flask

app = Flask(__name__)


def scratch():
    fd, path = tempfile.mkstemp()
    return fd, path


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=5000)
