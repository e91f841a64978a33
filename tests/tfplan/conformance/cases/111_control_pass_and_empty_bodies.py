def todo():
    pass

print(todo())
for x in range(3):
    pass
if True:
    pass
else:
    print("no")
while False:
    pass
print("done", x)
