-- +goose Up
-- A GiST index on the sensors' positions: bounding boxes (two where one crosses the
-- antimeridian) and the boxes around a radius are found by containment, in time that
-- grows with the matches, where the btree on (latitude, longitude) had to read a whole
-- latitude band.
CREATE INDEX sensors_geo ON sensors USING gist (point(longitude, latitude))
    WHERE latitude IS NOT NULL AND longitude IS NOT NULL;
DROP INDEX sensors_lat_lon;
