nums = [5, -2, 9, 0, -7, 3]
nums.sort()
print(nums)
nums.sort(reverse=True)
print(nums)
nums.sort(key=abs)
print(nums)
words = ["banana", "Apple", "cherry", "apple", "Banana"]
words.sort()
print(words)
words.sort(key=lambda w: w.lower())
print(words)
print(words.sort())
