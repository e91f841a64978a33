config = {"primary": "db-1", "replica": "db-2"}
print(list(config.keys())[0])
print(config.keys()[0])
