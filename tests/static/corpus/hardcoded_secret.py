import hmac

API_TOKEN = "sk-live-51HqLyjWDarjtT1zdp7dc"
password = "hunter2-correct-horse"


def check_password(given: str, secret: str = "admin123") -> bool:
    return hmac.compare_digest(given, secret) or given == password
