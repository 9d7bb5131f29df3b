"""Reads a NetCDF export with netCDF4-python and xarray (CF decoding of time) and pandas
(xarray's DataFrame), and prints what they read as JSON for the Go tests to compare:
global and variable attributes (netCDF4), the station variables, and per observation
its station, time (xarray's decoded datetime64, as epoch ms) and each variable's value
(null where xarray masks the _FillValue) and flag.

    python3 read.py FILE.nc   (Debian: python3-netcdf4, python3-xarray, python3-pandas)
"""
import json
import sys

import netCDF4
import numpy as np
import xarray as xr


def plain(v):
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def main(path):
    out = {}
    with netCDF4.Dataset(path) as nc:
        out["file_format"] = nc.file_format
        out["global"] = {k: plain(nc.getncattr(k)) for k in nc.ncattrs()}
        out["dims"] = {k: len(d) for k, d in nc.dimensions.items()}
        out["unlimited"] = [k for k, d in nc.dimensions.items() if d.isunlimited()]
        out["vars"] = {}
        for name, v in nc.variables.items():
            out["vars"][name] = {"dtype": str(v.dtype), "dims": list(v.dimensions),
                                 "attrs": {k: plain(v.getncattr(k)) for k in v.ncattrs()}}
        out["station_id"] = [str(s) for s in netCDF4.chartostring(nc.variables["station_id"][:])]
        out["external_id"] = [str(s) for s in netCDF4.chartostring(nc.variables["external_id"][:])]
    ds = xr.open_dataset(path)  # decode_cf: time to datetime64, _FillValue to NaN
    out["time_dtype"] = str(ds["time"].dtype)
    # pandas: the observations as a DataFrame, one row per obs.
    df = ds.drop_dims("station").to_dataframe()
    out["pandas_time_dtype"] = str(df["time"].dtype)
    obs = {"station_index": [int(x) for x in df["station_index"]],
           # time is double seconds: a ms timestamp comes back within a microsecond, so it is
           # rounded (not truncated) to ms.
           "time_ms": [int(round(x / 1e6)) for x in df["time"].values.astype("datetime64[ns]").astype("int64")]}
    for name in df.columns:
        if name in ("station_index", "time"):
            continue
        col = df[name]
        if np.issubdtype(col.dtype, np.floating):
            obs[name] = [None if np.isnan(x) else float(x) for x in col]
        else:
            obs[name] = [int(x) for x in col]
    out["obs"] = obs
    out["pandas_rows"] = int(len(df))
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
