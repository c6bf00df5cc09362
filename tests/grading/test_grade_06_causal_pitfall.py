"""Lesson 06: wrong implementations students write, and correct alternatives."""
from harness import Alternative, Wrong, grading_tests

WRONG = [
    # last_token_pool
    Wrong("last_token_pool-last-tensor-position", "last_token_pool", """
        def last_token_pool(H, lengths):
            return H[:, -1]
        """, says="the last tensor position"),
    Wrong("last_token_pool-first-token", "last_token_pool", """
        def last_token_pool(H, lengths):
            return H[:, 0]
        """, says="has seen only itself"),
    Wrong("last_token_pool-off-by-one-lengths-as-index", "last_token_pool", """
        def last_token_pool(H, lengths):
            return H[torch.arange(H.shape[0]), lengths]
        """, says="off by one"),
    Wrong("last_token_pool-every-row-every-position", "last_token_pool", """
        def last_token_pool(H, lengths):
            return H[:, lengths - 1]
        """, says="Pair each row with its own position"),
    # last_real_index
    Wrong("last_real_index-count-minus-one-under-left-padding", "last_real_index", """
        def last_real_index(attention_mask):
            return attention_mask.long().sum(1) - 1
        """, says="left-padded"),
    Wrong("last_real_index-count-from-first-true-misses-a-hole", "last_real_index", """
        def last_real_index(attention_mask):
            mask = attention_mask.long()
            return mask.argmax(1) + mask.sum(1) - 1
        """, says="hole"),
    Wrong("last_real_index-argmax-gives-first-true", "last_real_index", """
        def last_real_index(attention_mask):
            return attention_mask.long().argmax(dim=1)
        """, says="argmax returns the FIRST position"),
    Wrong("last_real_index-first-real-token-n-minus-length", "last_real_index", """
        def last_real_index(attention_mask):
            return attention_mask.shape[1] - attention_mask.long().sum(1)
        """, says="the first real token"),
    Wrong("last_real_index-bool-only-where", "last_real_index", """
        def last_real_index(attention_mask):
            positions = torch.arange(attention_mask.shape[1])
            return torch.where(attention_mask, positions, -1).max(dim=1).values
        """, says="0/1 mask"),
    # knowledge check
    Wrong("knowledge_check-positions-are-the-lengths", "knowledge_check", """
        kc_positions = [7, 4, 9]
        kc_head_params = 2565
        kc_initial_loss = 1.61
        """, says="those are the lengths themselves"),
    Wrong("knowledge_check-head-without-bias", "knowledge_check", """
        kc_positions = [6, 3, 8]
        kc_head_params = 512 * 5
        kc_initial_loss = 1.61
        """, says="The head also has a bias"),
    Wrong("knowledge_check-loss-of-two-classes", "knowledge_check", """
        kc_positions = [6, 3, 8]
        kc_head_params = 2565
        kc_initial_loss = 0.69
        """, says="two-class head"),
    Wrong("knowledge_check-unrounded-loss", "knowledge_check", """
        import math
        kc_positions = [6, 3, 8]
        kc_head_params = 2565
        kc_initial_loss = math.log(5)
        """, says="is not rounded"),
    Wrong("knowledge_check-positions-as-a-tensor", "knowledge_check", """
        kc_positions = torch.tensor([7, 4, 9]) - 1
        kc_head_params = 2565
        kc_initial_loss = 1.61
        """, says="kc_positions is a torch tensor"),
]

ALTERNATIVES = [
    Alternative("last_token_pool-gather", "last_token_pool", """
        def last_token_pool(H, lengths):
            index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, H.shape[-1])
            return H.gather(1, index).squeeze(1)
        """),
    Alternative("last_token_pool-python-loop", "last_token_pool", """
        def last_token_pool(H, lengths):
            return torch.stack([H[b, int(length) - 1] for b, length in enumerate(lengths)])
        """),
    Alternative("last_real_index-index-weighted-argmax", "last_real_index", """
        def last_real_index(attention_mask):
            n = attention_mask.shape[1]
            return (attention_mask.long() * torch.arange(n)).argmax(dim=1)
        """),
    Alternative("last_real_index-flip", "last_real_index", """
        def last_real_index(attention_mask):
            n = attention_mask.shape[1]
            return n - 1 - attention_mask.bool().flip(1).long().argmax(dim=1)
        """),
    Alternative("knowledge_check-computed-and-rounded", "knowledge_check", """
        import math
        kc_positions = [length - 1 for length in (7, 4, 9)]
        kc_head_params = 5 * 512 + 5
        kc_initial_loss = round(-math.log(1 / 5), 2)
        """),
]

globals().update(grading_tests("06_causal_pitfall", WRONG, ALTERNATIVES))
