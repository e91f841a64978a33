results = [
    {"doc": "d1", "score": 0.72, "source": "wiki", "age_days": 400},
    {"doc": "d2", "score": 0.91, "source": "blog", "age_days": 3},
    {"doc": "d3", "score": 0.65, "source": "wiki", "age_days": 10},
    {"doc": "d4", "score": 0.88, "source": "forum", "age_days": 90},
    {"doc": "d5", "score": 0.70, "source": "blog", "age_days": 1},
]
weights = {"wiki": 1.1, "blog": 0.9, "forum": 0.8}
def rerank(r):
    fresh = 1.0 if r["age_days"] < 30 else 0.95
    return round(r["score"] * weights[r["source"]] * fresh, 4)
ranked = sorted(results, key=rerank, reverse=True)
for r in ranked:
    print(r["doc"], rerank(r))
print("top2", [r["doc"] for r in ranked[:2]])
