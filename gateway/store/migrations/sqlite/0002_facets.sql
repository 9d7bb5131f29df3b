-- +goose Up
-- sensor_facets counts the sensors of each combination of the equality filters (service,
-- type, status, provider, feed, data types). Sync rewrites a service's rows when its
-- sensors change; a list filtered by these fields alone is counted from it in memory.
CREATE TABLE sensor_facets (
    service_id    text NOT NULL,
    sensor_type   text NOT NULL,
    status        text NOT NULL,
    provider_slug text NOT NULL,
    feed_id       text,
    data_types    text NOT NULL, -- JSON array
    n             integer NOT NULL
);
CREATE INDEX sensor_facets_service ON sensor_facets (service_id);
INSERT INTO sensor_facets
    SELECT service_id, sensor_type, status, provider_slug, feed_id, data_types, count(*)
    FROM sensors GROUP BY service_id, sensor_type, status, provider_slug, feed_id, data_types;
