"""Helpers for the security guide.

Examples of what not to do: eval(user_input), pickle.loads(blob),
os.system("rm -rf " + path), requests.get(url, verify=False).
"""

WARNING = "never call yaml.load(data) on untrusted input"
EXAMPLE = 'subprocess.run(cmd, shell=True)'


def describe():
    # hashlib.md5 is broken; use hashlib.sha256 instead
    return WARNING + EXAMPLE
