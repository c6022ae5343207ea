/*
 * Registration cache logic with mock registration callbacks: hits on the
 * same and contained ranges, LRU eviction under the entry and byte bounds,
 * referenced entries never evicted, invalidation (also while referenced),
 * and the disabled cache.
 */
#include <gtest/gtest.h>
#include <set>

extern "C" {
#include "sucg/core/sucg_rcache.h"
}

namespace {

struct mock {
    int                       regs = 0, deregs = 0;
    std::set<sucg_rcache_entry_t*> live;
};

ucs_status_t mock_reg(void *arg, sucg_rcache_entry_t *e)
{
    mock *m = static_cast<mock*>(arg);
    m->regs++;
    m->live.insert(e);
    e->memh = (void*)0x1;
    return UCS_OK;
}

void mock_dereg(void *arg, sucg_rcache_entry_t *e)
{
    mock *m = static_cast<mock*>(arg);
    m->deregs++;
    EXPECT_EQ(1u, m->live.erase(e)) << "double or unknown dereg";
}

const sucg_rcache_ops_t ops = { mock_reg, mock_dereg };

void *page(int i) { return (void*)(uintptr_t)(0x100000 + i * 0x10000); }

class sucg_rcache_test : public ::testing::Test {
protected:
    void init(unsigned max_entries, size_t max_bytes)
    {
        sucg_rcache_init(&rc, &ops, &m, max_entries, max_bytes);
    }
    void TearDown() override
    {
        sucg_rcache_cleanup(&rc);
        EXPECT_EQ(m.regs, m.deregs);
        EXPECT_TRUE(m.live.empty());
    }
    mock          m;
    sucg_rcache_t rc;
};

} // namespace

TEST_F(sucg_rcache_test, hit_same_and_contained)
{
    sucg_rcache_entry_t *a, *b, *c;
    init(8, 1 << 30);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, (char*)page(0) + 100, 10000, &a));
    sucg_rcache_put(&rc, a);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, (char*)page(0) + 100, 10000, &b));
    EXPECT_EQ(a, b);
    sucg_rcache_put(&rc, b);
    /* a sub-range within the registered (page aligned) region */
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, (char*)page(0) + 4096, 100, &c));
    EXPECT_EQ(a, c);
    sucg_rcache_put(&rc, c);
    EXPECT_EQ(1, m.regs);
    EXPECT_EQ(2u, rc.hits);
    EXPECT_EQ(1u, rc.misses);
    EXPECT_EQ(0u, a->start % SUCG_RCACHE_ALIGN);
    EXPECT_EQ(0u, a->end % SUCG_RCACHE_ALIGN);
}

TEST_F(sucg_rcache_test, larger_range_misses_and_ids_unique)
{
    sucg_rcache_entry_t *a, *b;
    init(8, 1 << 30);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &a));
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100000, &b));
    EXPECT_NE(a, b);
    EXPECT_NE(a->id, b->id);
    sucg_rcache_put(&rc, a);
    sucg_rcache_put(&rc, b);
    EXPECT_EQ(2, m.regs);
}

TEST_F(sucg_rcache_test, lru_eviction_by_entries)
{
    sucg_rcache_entry_t *e[4];
    init(3, 1 << 30);
    for (int i = 0; i < 3; ++i) {
        ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(i), 100, &e[i]));
        sucg_rcache_put(&rc, e[i]);
    }
    /* touch 0: 1 becomes least recently used */
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &e[0]));
    sucg_rcache_put(&rc, e[0]);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(3), 100, &e[3]));
    sucg_rcache_put(&rc, e[3]);
    EXPECT_EQ(1, m.deregs);
    EXPECT_EQ(3u, rc.nentries);
    EXPECT_EQ(1u, rc.evictions);
    int regs = m.regs;
    sucg_rcache_entry_t *x;
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &x));   /* still cached */
    sucg_rcache_put(&rc, x);
    EXPECT_EQ(regs, m.regs);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(1), 100, &x));   /* was evicted */
    sucg_rcache_put(&rc, x);
    EXPECT_EQ(regs + 1, m.regs);
}

TEST_F(sucg_rcache_test, eviction_by_bytes_and_referenced_kept)
{
    sucg_rcache_entry_t *a, *b, *c;
    init(100, 3 * SUCG_RCACHE_ALIGN);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 2 * SUCG_RCACHE_ALIGN, &a));
    /* a is referenced: the next one goes over the bound, nothing evicted */
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(1), 2 * SUCG_RCACHE_ALIGN, &b));
    EXPECT_EQ(0, m.deregs);
    sucg_rcache_put(&rc, a);   /* over the bound: shrink now, a is LRU */
    EXPECT_EQ(1, m.deregs);
    EXPECT_LE(rc.nbytes, rc.max_bytes);
    sucg_rcache_put(&rc, b);
    /* larger than the whole cache: private, dropped at put */
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(2), 8 * SUCG_RCACHE_ALIGN, &c));
    sucg_rcache_put(&rc, c);
    EXPECT_EQ(2, m.deregs);
}

TEST_F(sucg_rcache_test, invalidate)
{
    sucg_rcache_entry_t *a, *b, *x;
    init(8, 1 << 30);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &a));
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(1), 100, &b));
    sucg_rcache_put(&rc, b);
    sucg_rcache_invalidate(&rc, page(1), 1);      /* unreferenced: gone now */
    EXPECT_EQ(1, m.deregs);
    sucg_rcache_invalidate(&rc, page(0), 1);      /* referenced: deferred */
    EXPECT_EQ(1, m.deregs);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &x));
    EXPECT_NE(a, x) << "an invalidated entry must never be found again";
    sucg_rcache_put(&rc, a);                      /* last ref: destroyed */
    EXPECT_EQ(2, m.deregs);
    sucg_rcache_put(&rc, x);
}

TEST_F(sucg_rcache_test, disabled)
{
    sucg_rcache_entry_t *a, *b;
    init(0, 1 << 30);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &a));
    sucg_rcache_put(&rc, a);
    ASSERT_EQ(UCS_OK, sucg_rcache_get(&rc, page(0), 100, &b));
    sucg_rcache_put(&rc, b);
    EXPECT_EQ(2, m.regs);
    EXPECT_EQ(2, m.deregs);
    EXPECT_EQ(0u, rc.nentries);
}
