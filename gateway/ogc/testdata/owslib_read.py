"""Reads the gateway's OGC API with OWSLib (Debian python3-owslib) and prints what it read
as one JSON object, for gateway/ogc's end-to-end test to compare with the REST API.

usage: owslib_read.py <ogc base url> <api key> <edr collection> <location id> <datetime>

OWSLib 0.27 (Debian bookworm) has the Features client (owslib.ogcapi.features.Features)
but no EDR client (owslib.ogcapi.edr arrived in 0.28): the EDR collection is read with its
Collections client, and the location's time series with the same client's request helper
(its URL building, headers and error handling), not with code of ours.
"""
import json
import sys

from owslib.ogcapi import Collections
from owslib.ogcapi.features import Features

base, key, edr, location, dt = sys.argv[1:6]
if not base.endswith("/"):
    base += "/"
headers = {"x-api-key": key}

feat = Features(base, headers=headers)
out = {
    "conformance": feat.conformance().get("conformsTo", []),
    "collections": [c["id"] for c in feat.collections()["collections"]],
    "feature_collections": feat.feature_collections(),
}
items = feat.collection_items("sensors", limit=1000)
out["items_matched"] = items.get("numberMatched")
out["items_ids"] = [f["id"] for f in items["features"]]
first = out["items_ids"][0]
out["item"] = feat.collection_item("sensors", first)["id"]
bbox_items = feat.collection_items("sensors", bbox=[-180, 0, 180, 90], limit=1000)
out["bbox_ids"] = [f["id"] for f in bbox_items["features"]]

cols = Collections(base, headers=headers)
col = cols.collection(edr)
out["edr_collection"] = {
    "id": col["id"],
    "queries": sorted(col["data_queries"].keys()),
    "parameters": sorted(col["parameter_names"].keys()),
}
cov = cols._request(path=f"collections/{edr}/locations/{location}", kwargs={"datetime": dt})
out["coverage"] = {
    "type": cov["type"],
    "domainType": cov["domain"]["domainType"],
    "t": cov["domain"]["axes"]["t"]["values"],
    "ranges": {p: r["values"] for p, r in cov["ranges"].items()},
}
print(json.dumps(out))
