flag = False
if flag:
    message = "set"
print("checking")
print(message)
