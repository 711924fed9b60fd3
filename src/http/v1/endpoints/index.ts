import type { Endpoint } from '../endpoint.js';
import { getListing } from './get-listing.js';
import { listChanges } from './list-changes.js';
import { listFacets } from './list-facets.js';
import { listListings } from './list-listings.js';

/** Every /v1 endpoint, in the order the document lists them. */
export const ENDPOINTS: readonly Endpoint[] = [listListings, listFacets, listChanges, getListing];
