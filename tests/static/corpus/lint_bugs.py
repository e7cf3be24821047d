def collect(item, bucket=[]):
    bucket.append(item)
    try:
        total = sum(bucket)
    except:
        total = 0
    result = totl + 1
    if item is "x":
        return None
    return bucket
