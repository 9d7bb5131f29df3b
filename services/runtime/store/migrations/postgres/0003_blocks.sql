-- +goose Up
-- Blocks: consecutive readings of one station, source format and month, whose
-- measurements (and, separately, raw fragments) are packed and compressed together, once
-- per block instead of once per reading. A reading in a block keeps, in its measurements
-- column, only a reference to it (a tag byte 0xfd, then block id << 8 | its index as a
-- uvarint; raw and raw_format NULL): no new column, since a ninth column would widen
-- every row's null bitmap and header by 8 bytes. A reading alone in its batch (the steady
-- state of a live poll) and every reading stored before this migration keep their values
-- inline and are read as before.
--
-- Partitioned by month of ts (the block's first reading) like readings, and a block never
-- spans months, so retention drops a month's blocks with its readings. ts_last lets
-- retention delete the blocks of the boundary month whose readings are all gone.
CREATE SEQUENCE blocks_id_seq AS bigint;
CREATE TABLE blocks (
  id           bigint NOT NULL,
  station      integer NOT NULL,
  ts           bigint NOT NULL,
  ts_last      bigint NOT NULL,
  measurements bytea NOT NULL,
  raw_format   integer,
  raw          bytea,
  PRIMARY KEY (id, ts)
) PARTITION BY RANGE (ts);
CREATE INDEX blocks_ts_last ON blocks (ts_last);

-- Partitions blocks_pYYYYMM are created with those of readings, before a batch is written.
