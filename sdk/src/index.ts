export {
  ListingsClient,
  Listings,
  type ClientOptions,
  type CallOptions,
  type ListParams,
  type ListingFilters,
  type ListingSelection,
  type GeoPoint,
  type ChangesParams,
  type SyncParams,
  type SyncStateStore,
  type ListingStore,
  type RawAnswer,
} from './client.js';
export { FileStateStore } from './state.js';
export { ListingsApiError, type RateLimit, type ClientErrorCode } from './errors.js';
export { baseUrlFor, countryOfKey, isLocalhostName, COUNTRIES, type Country } from './hosts.js';
export { fetchWithLocalhost, type FetchLike } from './transport.js';
export {
  verifyWebhook,
  createWebhookHandler,
  WebhookVerificationError,
  WEBHOOK_TOLERANCE_SECONDS,
  WEBHOOK_MAX_BODY_BYTES,
  type WebhookMessage,
  type WebhookErrorReason,
  type WebhookHandler,
  type WebhookHandlerOptions,
  type NodeWebhookRequest,
  type VerifyOptions,
} from './webhooks.js';
export {
  createListingsHandler,
  type ListingsHandler,
  type ListingsHandlerOptions,
  type ServerReadOptions,
  type UpstreamFailure,
  type NodeRequestLike,
  type NodeResponseLike,
  type ProxyStats,
} from './proxy.js';
export {
  ERROR_CODES,
  LIST_LISTINGS_PARAMETERS,
  LIST_LISTING_FACETS_PARAMETERS,
  LIST_CHANGES_PARAMETERS,
  USAGE_TYPES,
  type ErrorCode,
  type ErrorBody,
  type Listing,
  type ListingPage,
  type ListingFacets,
  type ChangePage,
  type ListingUpserted,
  type ListingRemoved,
  type SortKey,
  type UsageType,
  type ListingsChangedMessage,
  type ListingsResyncMessage,
  type WebhookTestMessage,
} from './openapi.js';
