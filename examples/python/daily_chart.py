#!/usr/bin/python3
"""A week of one sensor's readings as CSV into a pandas DataFrame, the daily mean, minimum
and maximum of one parameter drawn to a PNG.

Debian's packages only: apt-get install python3-pandas python3-matplotlib

    examples/python/daily_chart.py --sensor <id> --parameter water_temperature_c --out week.png

SENSORGATE_URL (default http://127.0.0.1:8080) and SENSORGATE_KEY (default the development
key of `make run`) say where and who. Without --sensor, the first buoy of the catalog.
"""
import argparse
import io
import json
import os
import sys
import urllib.parse
import urllib.request

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

BASE = os.environ.get("SENSORGATE_URL", "http://127.0.0.1:8080").rstrip("/") + "/api/v1"
KEY = os.environ.get("SENSORGATE_KEY", "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a")


def get(path, **query):
    url = BASE + path + ("?" + urllib.parse.urlencode(query) if query else "")
    req = urllib.request.Request(url, headers={"x-api-key": KEY})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read()
    except urllib.error.HTTPError as e:  # the API names the culprit: {"error", "code"}
        sys.exit(f"GET {url}: {e.code} {e.read().decode(errors='replace')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sensor", help="sensor id (UUID or the provider's id)")
    ap.add_argument("--parameter", default="water_temperature_c")
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--out", default="daily.png")
    args = ap.parse_args()

    sensor = args.sensor
    if not sensor:
        page = json.loads(get("/sensors", sensor_type="buoy", limit=1))
        if not page["sensors"]:
            sys.exit("no buoy in the catalog")
        sensor = page["sensors"][0]["id"]

    # The export streams every reading of the range as CSV in long form: one row per
    # measurement (sensor_id, external_id, timestamp, parameter, value, unit, ...).
    raw = get("/readings/export", sensor_ids=sensor, days=args.days, parameter=args.parameter, format="csv")
    df = pd.read_csv(io.BytesIO(raw), parse_dates=["timestamp"], comment="#")
    if df.empty:
        sys.exit(f"sensor {sensor}: no {args.parameter} readings in the last {args.days} days")
    unit = df["unit"].iloc[0]
    print(f"{len(df)} readings of {args.parameter} ({unit}) from {df['timestamp'].min()} to {df['timestamp'].max()}")

    daily = df.set_index("timestamp")["value"].resample("1D").agg(["mean", "min", "max", "count"])
    print(daily.round(2).to_string())

    fig, ax = plt.subplots(figsize=(8, 4))
    ax.fill_between(daily.index, daily["min"], daily["max"], alpha=0.25, label="min-max")
    ax.plot(daily.index, daily["mean"], marker="o", label="daily mean")
    ax.set_title(f"{df['external_id'].iloc[0]}: {args.parameter}")
    ax.set_ylabel(unit)
    ax.legend()
    fig.autofmt_xdate()
    fig.savefig(args.out, dpi=100, bbox_inches="tight")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
