import shlex
import subprocess


def backup(directory):
    # Never build a shell string: os.system("tar " + directory) would be unsafe.
    args = ["tar", "czf", "/tmp/backup.tgz", directory]
    subprocess.run(args, check=True)
    return shlex.join(args)
