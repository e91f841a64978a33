order = {"id": 7, "item": "widget", "tags": ["a", "b"]}
print(f"order {order['id']}: {order['item']}")
print(f'tags {", ".join(order["tags"])}')
print(f"{'nested' + ' ' + 'expr'}")
print(f"{order['item']!r:>12}|")
