queue = [("email", 3), ("sms", 1), ("email", 2), ("push", 5), ("sms", 4)]
capacity = {"email": 4, "sms": 10, "push": 3}
sent = {}
deferred = []
while queue:
    kind, n = queue.pop(0)
    room = capacity[kind] - sent.get(kind, 0)
    take = min(room, n)
    if take:
        sent[kind] = sent.get(kind, 0) + take
    if n > take:
        deferred.append((kind, n - take))
print(sent)
print(deferred)
