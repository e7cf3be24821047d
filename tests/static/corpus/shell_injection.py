import os
import subprocess


def count_lines(path: str) -> int:
    out = subprocess.check_output(f"wc -l {path}", shell=True)
    return int(out.split()[0])


def archive(path: str) -> None:
    os.system("tar czf backup.tgz " + path)
