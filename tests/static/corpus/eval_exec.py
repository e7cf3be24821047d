def calculate(expression: str) -> float:
    namespace: dict[str, object] = {}
    exec("import math", namespace)
    return float(eval(expression, namespace))
