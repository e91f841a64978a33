tpl = "{name} owes {amount:.2f}"
print(tpl.format(name="Ann", amount=3))
print(tpl.format(nam="Bo", amount=4))
