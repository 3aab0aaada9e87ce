from flask import Flask, request

app = Flask(__name__)


@app.route("/calc")
def calc():
    expr = request.args.get("expr", "")
    # evaluate the user's arithmetic
    return str(eval(expr))
