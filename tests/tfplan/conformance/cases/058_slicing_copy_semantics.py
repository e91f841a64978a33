orig = [[1, 2], [3, 4]]
shallow = orig[:]
shallow.append([5])
shallow[0].append(99)
print(orig)
print(shallow)
print(orig == shallow[:2], orig is shallow)
