import tempfile


def scratch_file():
    name = tempfile.mktemp(suffix=".dat")
    with open(name, "w") as fh:
        fh.write("")
    return name
