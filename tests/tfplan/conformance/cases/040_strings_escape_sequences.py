s = "col1\tcol2\nrow\\end"
print(s)
print(len(s), repr(s))
print("unicode: \u00e9 \u4e2d", len("\u00e9\u4e2d"))
print("quote \" and \'", 'single \' inside')
print(r"raw \n stays", len(r"\n"))
