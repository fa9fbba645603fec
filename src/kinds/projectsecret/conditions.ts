/** The conditions the server keeps on a ProjectSecret. */

/** The condition the sync keeps on a ProjectSecret with a reference. */
export const SYNCED = 'Synced';
/** The condition the delivery keeps on every ProjectSecret while a host cluster has its Secret. */
export const SECRET_DELIVERED = 'SecretDelivered';
