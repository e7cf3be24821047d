import ssl
import urllib.request

import requests


def fetch(url: str) -> str:
    context = ssl._create_unverified_context()
    with urllib.request.urlopen(url, context=context, timeout=10) as response:
        head = response.read(100).decode()
    return head + requests.get(url, verify=False, timeout=10).text
