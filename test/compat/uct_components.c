/*
 * Copyright (c) srqud developers. See COPYING for license information.
 *
 * The UCT components a process without libucp sees, one name a line: how
 * test/compat/load.sh checks the module's version check where it cannot
 * ask libucp (it tells the running UCX from the functions libuct exports).
 */
#include <uct/api/uct.h>
#include <stdio.h>

int main(void)
{
    uct_component_h *components;
    unsigned count, i;

    if (uct_query_components(&components, &count) != UCS_OK) {
        return 1;
    }
    for (i = 0; i < count; ++i) {
        uct_component_attr_t attr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME};

        if (uct_component_query(components[i], &attr) == UCS_OK) {
            printf("%s\n", attr.name);
        }
    }
    uct_release_component_list(components);
    return 0;
}
