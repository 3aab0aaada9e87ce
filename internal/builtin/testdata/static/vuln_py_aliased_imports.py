import subprocess as sp
from hashlib import sha1 as weak


def run(cmd, data):
    sp.Popen(cmd, shell=True)
    return weak(data).hexdigest()
