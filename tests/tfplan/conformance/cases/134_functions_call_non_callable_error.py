handlers = {"a": len, "b": 5}
print(handlers["a"]("xyz"))
print(handlers["b"]("xyz"))
