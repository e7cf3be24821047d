import pickle

import yaml


def load_config(blob: bytes, text: str) -> dict[str, object]:
    state = pickle.loads(blob)
    settings = yaml.load(text, Loader=yaml.Loader)
    return {"state": state, "settings": settings}
