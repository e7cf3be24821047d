from collections import Counter


def word_count(text):
    words = [word.strip(".,!?;:").lower() for word in text.split()]
    return dict(Counter(word for word in words if word))
