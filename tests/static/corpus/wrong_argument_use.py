def shout(words, times=1):
    return (words.upper() + "!") * times.bit_length()
