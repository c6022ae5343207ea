/*
 * UCP request bookkeeping of a running collective, used by the algorithms
 * (allgather_*.c) for every put, send and receive they post.
 *
 * Kept apart from sucg_coll.c so that calls go one way: sucg_coll.c starts
 * and progresses the algorithms through their ops tables, the algorithms
 * call down into these helpers, never back into sucg_coll.c.
 */
#include "sucg/core/sucg_internal.h"

static void sucg_coll_req_send_cb(void *request, ucs_status_t status,
                                  void *user_data)
{
    sucg_coll_h coll = user_data;

    if ((status != UCS_OK) && (coll->req_status == UCS_OK)) {
        coll->req_status = status;
    }
    coll->outstanding--;
    ucp_request_free(request);
}

void sucg_coll_req_param(sucg_coll_h coll, ucp_request_param_t *param,
                         ucp_mem_h memh)
{
    param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    param->cb.send      = sucg_coll_req_send_cb;
    param->user_data    = coll;
    if (memh != NULL) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param->memh          = memh;
    }
}

ucs_status_t sucg_coll_req_track(sucg_coll_h coll, ucs_status_ptr_t sptr)
{
    if (sptr == NULL) {
        return UCS_OK;                 /* completed in place */
    }
    if (UCS_PTR_IS_ERR(sptr)) {
        if (coll->req_status == UCS_OK) {
            coll->req_status = UCS_PTR_STATUS(sptr);
        }
        return UCS_PTR_STATUS(sptr);
    }
    coll->outstanding++;               /* callback decrements */
    return UCS_OK;
}
