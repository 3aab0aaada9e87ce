def delete_order(cursor, order_id):
    query = "DELETE FROM orders WHERE id = {}".format(order_id)
    cursor.execute(query)
