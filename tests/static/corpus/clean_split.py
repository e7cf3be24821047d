import re


def split(text: str, sep: str = ",", *, strip: bool = True) -> tuple[str, ...]:
    parts = re.split(re.escape(sep), text) if sep else [text]
    return tuple(part.strip() if strip else part for part in parts)
