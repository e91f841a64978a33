rows = [("eu", "de", "berlin", 3), ("eu", "de", "munich", 2), ("eu", "fr", "paris", 5), ("us", "ca", "sf", 4)]
tree = {}
for region, country, city, n in rows:
    tree.setdefault(region, {}).setdefault(country, {})[city] = n
print(tree)
for region, countries in tree.items():
    print(region, {c: sum(cities.values()) for c, cities in countries.items()})
