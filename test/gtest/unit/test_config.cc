/**
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * Settings whose "auto" depends on the device (host-side, no device
 * needed): what an HCA gets is what no test in the VM can see.
 */

#include <gtest/gtest.h>

extern "C" {
#include <uct/ib/srqud/srqud_config.h>
}

#include <climits>

namespace {

/* Mellanox's vendor id, as an mlx5 HCA reports it */
const uint32_t HCA_VENDOR_ID = 0x02c9;

}

TEST(srqud_config, only_soft_roce_doorbells_are_system_calls)
{
    EXPECT_TRUE(uct_srqud_config_doorbell_is_syscall(
            UCT_SRQUD_SOFT_ROCE_VENDOR_ID));
    EXPECT_FALSE(uct_srqud_config_doorbell_is_syscall(HCA_VENDOR_ID));
    EXPECT_FALSE(uct_srqud_config_doorbell_is_syscall(0));
}

/* auto batches a stream outside progress only where the doorbell it saves
 * is a system call; on an HCA a send is never held for a later one */
TEST(srqud_config, tx_batch_after_auto_holds_sends_only_on_soft_roce)
{
    EXPECT_EQ(8u, uct_srqud_config_tx_batch_after(
                          UCS_ULUNITS_AUTO, UCT_SRQUD_SOFT_ROCE_VENDOR_ID));
    EXPECT_EQ(UINT_MAX,
              uct_srqud_config_tx_batch_after(UCS_ULUNITS_AUTO, HCA_VENDOR_ID));
}

TEST(srqud_config, tx_batch_after_set_values_apply_on_every_device)
{
    for (uint32_t vendor : {UCT_SRQUD_SOFT_ROCE_VENDOR_ID, HCA_VENDOR_ID}) {
        EXPECT_EQ(UINT_MAX,
                  uct_srqud_config_tx_batch_after(UCS_ULUNITS_INF, vendor));
        EXPECT_EQ(0u, uct_srqud_config_tx_batch_after(0, vendor));
        EXPECT_EQ(2u, uct_srqud_config_tx_batch_after(2, vendor));
        EXPECT_EQ(128u, uct_srqud_config_tx_batch_after(128, vendor));
    }
}
