items = [f"item{i}" for i in range(1, 24)]
page_size = 5
pages = [items[i:i + page_size] for i in range(0, len(items), page_size)]
print(len(pages), [len(p) for p in pages])
for n, page in enumerate(pages, 1):
    if n in (1, len(pages)):
        print(f"page {n}/{len(pages)}: {page[0]}..{page[-1]}")
print(pages[-1])
