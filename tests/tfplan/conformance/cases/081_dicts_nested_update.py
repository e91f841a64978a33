cfg = {"db": {"host": "x", "port": 1}, "debug": False}
cfg["db"]["port"] = 5432
cfg.setdefault("cache", {})["ttl"] = 60
cfg["db"].update({"user": "svc"})
print(cfg)
print(cfg["db"].get("user"), cfg.get("cache", {}).get("ttl"), cfg.get("nope", {}).get("x", "none"))
